"""A tiny LongProc `data/` folder built in the repository's layout and schema (never its data).

Each task gets a short `prompts.yaml` with the placeholders the authors' loaders fill, and one
file per level holding rows with the fields their loaders read; `html_to_tsv` also gets its pages.
"""

from __future__ import annotations

import json
from pathlib import Path

PROMPTS = {
    "html_to_tsv": "Page:\n{html_str}\nAbout {task_topic}: {task_description}{filtering_instruction}"
    "\n```tsv\n{tsv_header}\n{{rows}}\n```",
    "pseudo_to_code": "Write C++ in ```cpp``` for:\n{pseudocode}\n[CODE]:",
    "path_traversal": "{city_context}\nRoute from {src_city} to {dst_city} in <Route></Route>.",
    "tom_tracking": "[STORY]\n{story}\n[QUESTION]\n{question}\n[YOUR ANSWER]",
    "countdown": "[EXAMPLES]\n{demonstration}\n[Problem]\nNumbers: {nums}\nTarget: {target}",
    "travel_planning": "APPROACH:\n{demonstration}\n\nPROBLEM:\n{problem}",
}
TRIP_PLAN = (
    "**Day 1-2:** Arriving in Oslo and visit Oslo for 2 days.\n"
    "**Day 2:** Fly from Oslo to Rome.\n"
    "**Day 2-4:** Visit Rome for 3 days."
)


def trip_row(tokens: float = 900.0, row_id: str = "trip_0") -> dict:
    """Two cities, no fixed schedule: Oslo for 2 days, then Rome for 3 (one flight, Oslo->Rome)."""
    return {
        "id": row_id,
        "num_cities": 2,
        "total_days": 4,
        "constraints": [
            {"type": "duration", "city": "Oslo", "num_days": 2},
            {"type": "duration", "city": "Rome", "num_days": 3},
        ],
        "connected_cities": [["Oslo", "Rome"]],
        "disambig_question_text": "You plan to visit 2 European cities for 4 days in total.",
        "ground_truth_plan": "Here is the trip plan for visiting the 2 European cities for 4 "
        f"days:\n\n{TRIP_PLAN}",
        "ground_truth_cities": "Oslo**Rome",
        "ground_truth_durations": "2**3",
        "estimated_output_tokens": tokens,
    }


ADD_CODE = [
    "int main() {",
    "    int a, b;",
    "    cin >> a >> b;",
    '    cout << a + b << "\\n";',
    "}",
]
ROUTE = "From Lyon, take a bus to Oslo.\nFrom Oslo, take a train to Rome."
TRACE = (
    "Ann's belief on the key:\n"
    "- Step 0: (initial state) {Ann location: hall; key location: hall's box; Ann sees key: True;"
    " Ann's belief on key: hall's box}\n"
    "- Step 1: (Ann location changed; key location unchanged) {Ann location: den; key location:"
    " hall's box; Ann sees key: False; Ann's belief on key: hall's box}\n"
    "Final Answer: hall's box"
)
TABLE = "name\tprice\nApple\t$1\nPear\t$2"


def html_row(n: int, level: str) -> dict:
    return {
        "output_length_group": level,
        "task_id": f"W{n}_{level}_1",
        "website_id": f"W{n}",
        "html_path": f"webpage/W{n}_{level}_1.html",
        "task_topic": "fruit",
        "task_description": "(1) name; (2) price",
        "gt": TABLE,
        "tsv_header": "name\tprice",
        "filtering_instruction": "",
    }


def code_row(n: int) -> dict:
    return {
        "problem_id": f"{n}A",
        "pseudocode_lines": ["define main", "read a and b", "print a + b"],
        "code_lines": ADD_CODE,
        "testcases": [[["2 3"], ["5"]], [["10 -4"], ["6"]]],
    }


def path_row() -> dict:
    return {
        "problem_description": "",
        "context_repr": [],
        "question_repr": ["Lyon", "Rome"],
        "answer_repr": [],
        "context_nl": "You can travel from Lyon to Oslo by bus. You can travel from Oslo to Rome"
        " by train.",
        "question_nl": "",
        "answer_nl": ROUTE,
    }


def tom_row() -> dict:
    return {
        "story_components": {},
        "story": "Step 0: Ann is in the hall; the key is on the hall's box.\nStep 1: Ann moves to"
        " the den.",
        "question": "Where does Ann believe the key is?",
        "solution": TRACE,
        "answer": "hall's box",
    }


def write_data(root: Path, rows: int = 2) -> Path:
    """Write the tiny data/ folder at `root`: `rows` rows per task and level."""
    levels = {"pseudo_to_code": ("0.5k", "2k"), "travel_planning": ()}
    for task, prompt in PROMPTS.items():
        folder = root / task
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "prompts.yaml").write_text(
            "USER_PROMPT: |-\n" + "".join(f"  {line}\n" for line in prompt.split("\n")),
            encoding="utf-8",
        )
        for level in levels.get(task, ("0.5k", "2k", "8k")):
            if task == "html_to_tsv":
                made = [html_row(n, level) for n in range(rows)]
                (folder / "webpage").mkdir(exist_ok=True)
                for n in range(rows):
                    (folder / "webpage" / f"W{n}_{level}_1.html").write_text(
                        "<ul><li>Apple $1</li><li>Pear {not a field} $2</li></ul>",
                        encoding="utf-8",
                    )
            elif task == "pseudo_to_code":
                made = [code_row(n) for n in range(rows)]
            elif task == "path_traversal":
                made = [path_row() for _ in range(rows)]
            elif task == "countdown":
                made = [{"nums": [1, 1, 1, 1], "target": 4, "solution": []} for _ in range(rows)]
            else:
                made = [tom_row() for _ in range(rows)]
            (folder / f"{task}_{level}.json").write_text(json.dumps(made), encoding="utf-8")
    trips = [trip_row(900.0 + n, f"trip_{n}") for n in range(rows)]
    trips += [trip_row(5000.0 + n, f"trip_8k_{n}") for n in range(rows)] + [trip_row(3000.0)]
    folder = root / "travel_planning"
    (folder / "travel_planning_all.json").write_text(json.dumps(trips), encoding="utf-8")
    (folder / "travel_planning_icl_examples.json").write_text(
        json.dumps([trip_row(0.0, "example")]), encoding="utf-8"
    )
    return root
