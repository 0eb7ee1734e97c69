"""GraphWalks rows built by the tests in the card's schema (never copied from the dataset).

A small random directed graph of hex node ids, written as the 2026-02-27 prompt writes it
(instructions, worked examples, then the graph and the operation); the gold is computed here:
the parents of a node, or the nodes at exactly a BFS depth (revisited nodes not re-added).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

INSTRUCTIONS = (
    "You will be given a graph as a list of directed edges. All nodes are at least degree 1. "
    "You will also get a description of an operation to perform on the graph.\n"
    "Your job is to execute the operation on the graph and return the set of nodes that the "
    "operation results in. If asked for a breadth-first search (BFS), only return the nodes "
    "that are both reachable and exactly at that depth (not nodes at intermediate depths), and "
    "do not return the starting node.\nIf asked for the parents of a node, only return the "
    "nodes that have an edge leading to the given node, do not return the given node itself.\n"
)
EXAMPLES = (
    "Here is an example:\n<begin example>\nThe graph has the following edges:\nuvwx -> alke\n"
    "abcd -> uvwx\nabcd -> efgh\nefgh -> uvwx\n\nExample 1:\nOperation:\nPerform a BFS from "
    "node abcd with depth 1.\nFinal Answer: [uvwx, efgh]\nExample 2:\nOperation:\nFind the "
    "parents of node uvwx.\nFinal Answer: [abcd, efgh]\n<end example>\n\n"
)


def node(i: int) -> str:
    return hashlib.md5(str(i).encode()).hexdigest()[:10]


def edges_of(nodes: int, edges: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = {(node(i), node((i + 1) % nodes)) for i in range(nodes)}
    while len(out) < edges:
        a, b = rng.randrange(nodes), rng.randrange(nodes)
        if a != b:
            out.add((node(a), node(b)))
    return sorted(out, key=lambda e: rng.random())


def bfs_at(edges: list[tuple[str, str]], start: str, depth: int) -> list[str]:
    seen, frontier = {start}, {start}
    for _ in range(depth):
        frontier = {b for a, b in edges if a in frontier} - seen
        seen |= frontier
    return sorted(frontier)


def graphwalks_row(
    kind: str = "parents", *, nodes: int = 8, edges: int = 12, seed: int = 0, depth: int = 2
) -> dict[str, Any]:
    """Return one row of `kind` (bfs or parents) over a random graph, gold computed here."""
    graph = edges_of(nodes, edges, seed)
    target = node(seed % nodes)
    if kind == "parents":
        operation = f"Find the parents of node {target}."
        gold = sorted({a for a, b in graph if b == target and a != target})
    else:
        operation = f"Perform a BFS from node {target} with depth {depth}."
        gold = bfs_at(graph, target, depth)
    edge_list = "\n".join(f"{a} -> {b}" for a, b in graph)
    prompt = (
        f"{INSTRUCTIONS}{EXAMPLES}Here is the graph to operate on:\nThe graph has the following "
        f"edges:\n{edge_list}\n\nOperation:\n{operation}\n"
    )
    return {
        "prompt": prompt,
        "answer_nodes": gold,
        "prompt_chars": len(prompt),
        "problem_type": kind,
        "date_added": "02-27-2026",
    }


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path
