"""The embedded model behind the router, from the CLI: plans stored beside the generations."""

import pytest

from longscope.run.store import RunStore

from ..cli_helper import longscope


@pytest.mark.model
# Slow (make test-slow): ~16 s; a routed run on the embedded model also runs in the bench_router
# smoke of the default run.
@pytest.mark.slow
def test_a_routed_run_splits_what_exceeds_the_budget(tmp_path, gemma_tokenizer) -> None:
    run = longscope(
        "run", "longctx", "--model", "llamacpp/gemma3-270m", "-S", "tiers=1", "--limit", "1",
        "--router-length", "1536", "-o", str(tmp_path), "-q", timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    said = " ".join(run.stdout.split())
    assert "router (prompt budget" in said and "map-reduce 1;" in said
    with RunStore(tmp_path, create=False) as store:
        header = store.run()
        routes = store.routes(header["run_id"])
        ((_, _, generation),) = store.generations(header["run_id"])
    info = header["header"]["model_info"]
    assert "+router:map-reduce:1536" in info["model_id"]
    assert info["details"]["router"]["budget"] == 1536
    (plan,) = routes.values()
    assert plan["decision"] == "map-reduce" and plan["prompt_tokens"] > 1536
    assert len(plan["chunks"]) >= 3
    assert all(c["context_tokens"] < 1536 for c in plan["chunks"])
    assert generation.status in ("ok", "length") and plan["calls"] >= len(plan["chunks"])


@pytest.mark.model
def test_a_routed_run_retrieves_within_the_budget_and_reports_it(tmp_path, gemma_tokenizer) -> None:
    run = longscope(
        "run", "longctx", "--model", "llamacpp/gemma3-270m", "-S", "tiers=1", "--limit", "1",
        "--router-length", "1536", "--router-strategy", "retrieve", "-o", str(tmp_path), "-q",
        timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "retrieve 1;" in " ".join(run.stdout.split())
    with RunStore(tmp_path, create=False) as store:
        header = store.run()
        routes = store.routes(header["run_id"])
        ((_, _, generation),) = store.generations(header["run_id"])
    assert "+router:retrieve:1536" in header["header"]["model_info"]["model_id"]
    (plan,) = routes.values()
    retrieval = plan["retrieval"]
    assert plan["decision"] == "retrieve" and plan["prompt_tokens"] > 1536
    assert retrieval["context_tokens_kept"] <= plan["budget"] and retrieval["kept"]
    assert len(retrieval["kept"]) + retrieval["dropped"]["passages"] == retrieval["passages"]
    # One call: the tokens the model was sent fit the budget the plan names.
    assert plan.get("calls", 1) == 1 and 0 < generation.prompt_tokens <= plan["budget"]
    report = longscope("report", str(tmp_path), "--html", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr[-2000:]
    html = (tmp_path / "r.html").read_text()
    assert f"kept {len(retrieval['kept'])} of {retrieval['passages']} passages" in html
