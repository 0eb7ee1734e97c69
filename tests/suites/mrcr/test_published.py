"""`compare --published mrcr`: the shipped rows, keyed as runs are, each kind kept apart."""

from __future__ import annotations

from longscope.api import published_rows
from longscope.suites.mrcr.schema import BINS


def test_board_rows_are_bins_and_googles_mrcr_v2_is_never_a_bin() -> None:
    table = published_rows("mrcr")
    assert "contextarena.ai" in table.source and "Gemini 3 Pro" in table.source
    board = [r for r in table.rows if r.mode == "2-needle"]
    google = [r for r in table.rows if r.mode == "Google MRCR v2, 8-needle"]
    assert len(board) + len(google) == len(table.rows) and board and google
    for row in board:
        # Keyed by bin upper edge in tokens, as a run's by-length curve is.
        assert row.lengths and set(row.lengths) <= set(BINS), row.model
        assert all(0 <= v <= 100 for v in row.lengths.values())
        assert not row.cells
    gpt41 = next(r for r in board if r.model == "openai/gpt-4.1")
    assert gpt41.lengths[131072] == 55.5 and gpt41.lengths[1048576] == 42.1
    for row in google:
        # Google's own data, averaged up to 128K: shown apart, never placed on the bin curve.
        assert not row.lengths and set(row.cells) == {"mrcr_v2_8needle"}
    gemini3 = next(r for r in google if r.model == "gemini-3-pro-preview")
    assert gemini3.cells["mrcr_v2_8needle"] == {"128k average": 77.0, "1M pointwise": 26.3}


def test_a_run_measured_up_to_128k_is_set_beside_board_aucs_over_8k_to_128k(tmp_path) -> None:
    import json

    from longscope.run.store import RunStore
    from longscope.suites import create_suite
    from longscope.types import Generation, Sample

    from ...cli_helper import longscope
    from .rows import mrcr_row, write_jsonl

    data = write_jsonl(tmp_path / "rows.jsonl", [mrcr_row(2)])
    suite = create_suite("mrcr", {"data": str(data)})
    bins = [8192, 16384, 32768, 65536, 131072]
    samples, answers = [], {}
    for upper in bins:
        for i in range(2):
            sid = f"2n-{upper}-{i}"
            meta = {"prefix": "P", "n_needles": 2, "bin": upper, "bins_counted_in": "o200k",
                    "data": "file:rows.jsonl:x"}  # fmt: skip
            samples.append(Sample(sid, "2-needle", "en", "[]", "q", ("Pgold",), upper, meta))
            answers[sid] = "Pgold" if i == 0 else "nope"  # 1.0 and 0.0: 50 at every bin
    run = tmp_path / "run"
    with RunStore(run) as store:
        store.put_run("r128", "mrcr", {"params": suite.params(), "model": "openai/m"})
        store.put_samples("r128", samples)
        for sample in samples:
            store.put_generation("r128", sample.id, 0, Generation(answers[sample.id], "ok"))
    done = longscope("compare", str(run), "--published", "mrcr", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["model"]: r for r in json.loads(done.stdout)}
    gemini = rows["google/gemini-2.5-pro-preview-03-25 (2-needle)"]
    # The board's row over the run's 8K-128K bins: 88.5, its "AUC @128k" (73.7 is its AUC @1M).
    assert gemini["AUC_range"] == "8K-128K" and round(gemini["AUC"], 1) == 88.5
    mine = rows["openai/m"]
    assert mine["AUC"] == 50.0 and mine["AUC_range"] == "8K-128K"
    # Stand-in data: marked, with the reason, and ranked after the board's rows.
    assert mine["comparable"].startswith("no: data file:rows.jsonl:x")
    assert list(rows).index("openai/m") == len(rows) - 1
    table = longscope("compare", str(run), "--published", "mrcr")
    assert table.returncode == 0 and "AUC 8K-128K" in table.stdout
