"""
No reward for the impossible (server/dispatch/pipeline.c): a GPU RESULT whose timing
ran faster than half the roofline bound (timing.suspicious, the fake's
`suspicious` marker) ends `correct` with timing.speedup as measured, but
reward_fields.speedup null, reward_fields.suspicious true, no speedup on the
submission (so none in the statistics) and feedback that says the speedup is
withheld; a believable timing keeps its number and says suspicious false,
and a compile-only result (no timing) says false too. Every result
validates against schema/result.schema.json.

The server runs with the fake GPU worker of test_gpu_scheduling.py.
"""
import json

import pytest

from conftest import SOURCE_ROOT, compile_sub, unique, wait_done
from schemacheck import Registry, Validator
from test_gpu_scheduling import FakeGpuServer, full

SCHEMA_DIR = SOURCE_ROOT / "schema"


@pytest.fixture(scope="module")
def fake(tmp_module):
    fs = FakeGpuServer(tmp_module / "reward", gpus="0", per_gpu=1, knobs={"work_s": 0.02}).start()
    yield fs
    rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def schema_errors(result):
    reg = Registry(SCHEMA_DIR)
    return Validator(reg).errors(result, json.loads((SCHEMA_DIR / "result.schema.json").read_text()),
                                 "result.schema.json")


def test_suspicious_timing_gets_no_speedup(fake):
    ids = fake.submit([full("suspicious"), full()])
    done = fake.wait_all(ids)
    sus, normal = done[ids[0]], done[ids[1]]

    res = sus["result"]
    assert sus["verdict"] == "correct" and res["verdict"] == "correct", sus
    assert res["timing"]["suspicious"] is True and res["timing"]["speedup"] == 40.0, res["timing"]
    rf = res["reward_fields"]
    assert rf["suspicious"] is True and rf["speedup"] is None, rf
    assert rf["correct"] is True and rf["compiled"] is True, rf
    assert sus["speedup"] is None, f"the submission's speedup should be withheld too: {sus}"
    assert "shape 'default' ran faster than the hardware allows" in res["feedback"], res["feedback"]
    assert "speedup is withheld" in res["feedback"], res["feedback"]
    assert not schema_errors(res), schema_errors(res)

    res = normal["result"]
    assert normal["verdict"] == "correct", normal
    rf = res["reward_fields"]
    assert rf["suspicious"] is False and rf["speedup"] == 1.0, rf
    assert normal["speedup"] == 1.0, normal
    assert "withheld" not in res["feedback"], res["feedback"]
    assert not schema_errors(res), schema_errors(res)

    # the list view agrees with the single one
    with fake.server.client() as c:
        r = c.get("/v1/submissions", params={"limit": 100})
    assert r.status_code == 200, r.text
    listed = {it["id"]: it for it in r.json()["items"]}
    assert listed[ids[0]]["speedup"] is None and listed[ids[1]]["speedup"] == 1.0, listed


def test_compile_only_is_not_suspicious(fake):
    with fake.server.client() as c:
        r = c.post("/v1/submissions", json=compile_sub(unique(full()["source"])))
        assert r.status_code == 202, r.text
        body = wait_done(c, r.json()["id"])
    res = body["result"]
    assert res["verdict"] == "compiled", res
    assert res["reward_fields"] == {"compiled": True, "correct": False, "speedup": None, "speedup_vs": None,
                                    "roofline_fraction": None, "suspicious": False}, res
    assert not schema_errors(res), schema_errors(res)
