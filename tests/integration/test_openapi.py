"""
schema/openapi.json is the contract: every route the server answers is
documented with the status codes and content types it really sends, response
bodies validate against the documented schemas, undocumented routes are 404
(or 405 for an undocumented method), and every limit in the documents equals
its constant in common/limits.h.
"""
import json
import re

import pytest

from conftest import (SOURCE_ROOT, accepted, compile_sub, full_sub, inline_full_sub, read_limits,
                      unique, wait_done, GOOD_KERNEL, BROKEN_KERNEL, library_task)
from schemacheck import Registry, SchemaError, Validator

SCHEMA_DIR = SOURCE_ROOT / "schema"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


@pytest.fixture(scope="module")
def api():
    return json.loads((SCHEMA_DIR / "openapi.json").read_text())


@pytest.fixture(scope="module")
def reg():
    return Registry(SCHEMA_DIR)


def deref(reg, node, base="openapi.json"):
    while isinstance(node, dict) and "$ref" in node and len(node) == 1:
        base, node = reg.resolve(base, node["$ref"])
    return node


def find_operation(api, method, path):
    """(template, operation) documented for a concrete @path, or (None, None)."""
    for tmpl, item in api["paths"].items():
        rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(tmpl)) + "$"
        if re.match(rx, path):
            return tmpl, item.get(method)
    return None, None


class Checker:
    """Sends requests and checks each answer against the document."""

    def __init__(self, api, reg, client):
        self.api, self.reg, self.client = api, reg, client
        self.val = Validator(reg)
        self.covered = set()
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)

    def check(self, method, path, **kw):
        r = self.client.request(method.upper(), path, **kw)
        tmpl, op = find_operation(self.api, method, path.split("?")[0])
        assert tmpl is not None, f"{method.upper()} {path}: path not documented"
        assert op is not None, f"{method.upper()} {tmpl}: method not documented"
        code = str(r.status_code)
        responses = op["responses"]
        assert code in responses, \
            f"{method.upper()} {path}: status {code} not documented ({sorted(responses)}): {r.text[:300]}"
        self.covered.add((method, tmpl, code))
        resp = deref(self.reg, responses[code])
        ctype = r.headers.get("content-type", "").split(";")[0].strip()
        content = resp.get("content", {})
        if content:
            assert ctype in content, f"{method.upper()} {path} {code}: content-type {ctype!r} not in {list(content)}"
            schema = content[ctype].get("schema")
            if schema is not None:
                body = r.json() if "json" in ctype else r.text
                errs = self.val.errors(body, schema, "openapi.json")
                if errs:
                    self.fail(f"{method.upper()} {path} {code}: body breaks the schema:\n  " +
                              "\n  ".join(errs[:20]) + f"\n  body: {json.dumps(body)[:1000]}")
        for name, h in resp.get("headers", {}).items():
            h = deref(self.reg, h)
            if h.get("required") or name in ("Location", "Retry-After"):
                if name == "Location" and "ids" in (r.json() if "json" in ctype else {}):
                    continue        # batch answers carry no Location
                assert name.lower() in r.headers, f"{method.upper()} {path} {code}: no {name} header"
        return r


def test_every_route_answers_as_documented(api, reg, client):
    ck = Checker(api, reg, client)
    # submissions
    r = ck.check("post", "/v1/submissions", json=compile_sub(unique(GOOD_KERNEL)))
    sid = r.json()["id"]
    ck.check("post", "/v1/submissions", json={"submissions": [compile_sub(GOOD_KERNEL)] * 2})
    ck.check("post", "/v1/submissions?wait=30", json=compile_sub(GOOD_KERNEL))
    ck.check("post", "/v1/submissions", content=b"{", headers={"content-type": "application/json"})
    ck.check("post", "/v1/submissions", json=compile_sub(bogus=True))
    ck.check("post", "/v1/submissions", content=b"{}", headers={"content-type": "text/plain"})
    ck.check("get", f"/v1/submissions/{sid}")
    wait_done(client, sid)
    ck.check("get", f"/v1/submissions/{sid}?wait=1")
    bad = accepted(client.post("/v1/submissions", json=compile_sub(unique(BROKEN_KERNEL))))
    wait_done(client, bad)
    ck.check("get", f"/v1/submissions/{bad}")
    ck.check("get", "/v1/submissions/987654321")
    ck.check("get", f"/v1/submissions/{sid}?wait=-5")
    ck.check("get", "/v1/submissions?limit=2")
    ck.check("get", "/v1/submissions?limit=0")
    ck.check("get", "/v1/submissions?state=done&verdict=compiled")
    ck.check("delete", f"/v1/submissions/{sid}")          # done: 409
    ck.check("delete", "/v1/submissions/987654321")
    full = accepted(client.post("/v1/submissions", json=full_sub(client)))
    ck.check("get", f"/v1/submissions/{full}")
    # A queued one to cancel: behind a backlog on the single compile worker.
    ids = client.post("/v1/submissions",
                      json={"submissions": [compile_sub(unique(GOOD_KERNEL)) for _ in range(20)]}).json()["ids"]
    ck.check("delete", f"/v1/submissions/{ids[-1]}")
    # tasks
    ck.check("get", "/v1/tasks")
    lt = library_task(client)
    tasks = client.get("/v1/tasks").json()["items"]
    if tasks:
        ck.check("get", f"/v1/tasks/{tasks[0]['name']}")
        ck.check("get", f"/v1/tasks/{tasks[0]['name']}/prompt")
        ck.check("get", f"/v1/tasks/{tasks[0]['name']}/prompt?format=json")
    ck.check("get", "/v1/tasks/nope_nope")
    ck.check("get", "/v1/tasks/nope_nope/prompt")
    ck.check("get", "/v1/tasks?level=abc")
    ck.check("get", "/v1/tasks?bogus=1")
    # operations
    for p in ("/v1/stats", "/metrics", "/livez", "/readyz"):
        ck.check("get", p)
    # the dashboard (docs/dashboard.md)
    run = client.post("/v1/submissions?wait=30", json=compile_sub(unique(GOOD_KERNEL), tags={"run_id": "oa", "step": 1}))
    assert run.status_code == 200, run.text
    for p in ("/", "/assets/app.js", "/assets/uPlot.min.css", "/assets/LICENSE", "/assets/nope.js", "/?x=1",
              "/v1/dashboard/now", "/v1/dashboard/now?window=1", "/v1/dashboard/runs?limit=5",
              "/v1/dashboard/runs?limit=0", "/v1/dashboard/run?id=oa&k=1,2", "/v1/dashboard/run?id=no-such-run",
              "/v1/dashboard/run", "/v1/dashboard/tasks", "/v1/dashboard/tasks?offset=-1",
              "/v1/dashboard/tasks?source=history", "/v1/dashboard/tasks?level=1&q=relu&limit=3",
              "/v1/dashboard/tasks?source=bogus",
              "/v1/dashboard/tasks/nope_nope", f"/v1/dashboard/submissions/{bad}",
              f"/v1/dashboard/submissions/{run.json()['id']}", "/v1/dashboard/submissions/987654321",
              f"/v1/dashboard/submissions/{bad}?x=1"):
        ck.check("get", p)
    if tasks:
        ck.check("get", f"/v1/dashboard/tasks/{tasks[0]['name']}")

    assert not ck.failures, "\n".join(ck.failures)
    # Every documented operation was exercised.
    ops = {(m, t) for t, item in api["paths"].items() for m in item if m in METHODS}
    done = {(m, t) for m, t, _ in ck.covered}
    assert ops <= done, f"not exercised: {sorted(ops - done)}"
    assert ("delete", "/v1/submissions/{id}", "200") in ck.covered
    assert ("post", "/v1/submissions", "200") in ck.covered
    if lt:
        assert ("get", "/v1/tasks/{name}", "200") in ck.covered


def test_undocumented_routes(api, client):
    for path in ("/", "/v1", "/v1/", "/v2/submissions", "/v1/submission", "/v1/submissions/1/x",
                 "/v1/tasks/a/b/c", "/metricsx", "/livez/", "/v1/stats/x", "/admin", "/v1/tokens",
                 "/.env", "/v1/submissions/%2e%2e/tasks", "/v1/tasks/", "/v1//tasks"):
        r = client.get(path)
        tmpl, _ = find_operation(api, "get", path)
        if tmpl is None:
            assert r.status_code == 404, f"GET {path}: {r.status_code} {r.text[:200]}"
            assert r.headers["content-type"].startswith("application/problem+json"), path
    for method, path in (("put", "/v1/submissions"), ("patch", "/v1/submissions/1"),
                         ("post", "/v1/tasks"), ("delete", "/v1/tasks"), ("post", "/metrics"),
                         ("put", "/v1/stats"), ("post", "/livez"), ("delete", "/v1/submissions")):
        r = client.request(method.upper(), path)
        tmpl, op = find_operation(api, method, path)
        assert tmpl is not None and op is None
        assert r.status_code == 405, f"{method.upper()} {path}: {r.status_code}"
        allow = {m.strip().lower() for m in r.headers.get("allow", "").split(",") if m.strip()}
        documented = {m for m in api["paths"][tmpl] if m in METHODS}
        assert documented <= allow, f"{method.upper()} {path}: Allow {allow} lacks {documented}"


def walk(node, path=""):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from walk(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}/{i}")


def schema_files():
    return ["openapi.json"] + sorted(p.name for p in SCHEMA_DIR.glob("*.schema.json"))


def test_limits_match_limits_h():
    limits = read_limits()
    assert limits["LIMIT_SOURCE_BYTES"] == 1 << 20, "limits.h parser"
    checked = 0
    for name in schema_files():
        doc = json.loads((SCHEMA_DIR / name).read_text())
        for path, node in walk(doc):
            xl = node.get("x-limit")
            if not isinstance(xl, dict):
                continue
            for kw, const in xl.items():
                assert const in limits, f"{name}{path}: x-limit names unknown {const}"
                assert kw in node, f"{name}{path}: x-limit for absent {kw}"
                assert node[kw] == limits[const], f"{name}{path}: {kw} {node[kw]} != {const} {limits[const]}"
                checked += 1
    assert checked >= 5, checked


# Limits the submission and task schemas must state, by where they live in the
# document's instances: (schema file, instance path, keyword, constant).
REQUIRED_LIMITS = [
    ("submission.schema.json", "/source", "maxLength", "LIMIT_SOURCE_BYTES"),
    ("submission.schema.json", "/options", "maxItems", "LIMIT_OPTIONS_MAX"),
    ("submission.schema.json", "/options/0", "maxLength", "LIMIT_OPTION_BYTES"),
    ("submission.schema.json", "/name_expressions", "maxItems", "LIMIT_NAME_EXPRESSIONS_MAX"),
    ("submission.schema.json", "/plan", "maxItems", "LIMIT_LAUNCHES_MAX"),
    ("submission.schema.json", "/plan/0/args", "maxItems", "LIMIT_ARGS_MAX"),
    ("submission.schema.json", "/scratch", "maxItems", "LIMIT_SCRATCH_BUFFERS_MAX"),
    ("submission.schema.json", "/tags/labels", "maxProperties", "LIMIT_TAGS_MAX"),
    ("submission.schema.json", "/tags/run_id", "maxLength", "LIMIT_TAG_STRING_BYTES"),
    ("submission.schema.json", "/timing/budget_ms", "maximum", "LIMIT_TIMING_BUDGET_MS_MAX"),
    ("submission.schema.json", "/timing/max_trials", "maximum", "LIMIT_TIMING_TRIALS_MAX"),
    ("task.schema.json", "/shapes", "maxItems", "LIMIT_TASK_SHAPES_MAX"),
    ("task.schema.json", "/buffers", "maxItems", "LIMIT_TASK_BUFFERS_MAX"),
    ("task.schema.json", "/buffers/0/shape", "maxItems", "LIMIT_TASK_DIMS_MAX"),
    ("task.schema.json", "/params", "maxProperties", "LIMIT_TASK_PARAMS_MAX"),
    ("task.schema.json", "/correctness_trials", "maximum", "LIMIT_CORRECTNESS_TRIALS_MAX"),
]


def schemas_at(reg, doc_name, schema, parts, depth=0):
    """Every subschema that applies to the instance location @parts (follows $ref, allOf/anyOf/oneOf)."""
    if depth > 50 or not isinstance(schema, dict):
        return []
    out = []
    if "$ref" in schema:
        n, s = reg.resolve(doc_name, schema["$ref"])
        out += schemas_at(reg, n, s, parts, depth + 1)
    for comb in ("allOf", "anyOf", "oneOf"):
        for s in schema.get(comb, []):
            out += schemas_at(reg, doc_name, s, parts, depth + 1)
    for cond in ("then", "else"):
        if cond in schema:
            out += schemas_at(reg, doc_name, schema[cond], parts, depth + 1)
    if not parts:
        return out + [schema]
    head, rest = parts[0], parts[1:]
    if head in schema.get("properties", {}):
        out += schemas_at(reg, doc_name, schema["properties"][head], rest, depth + 1)
    elif head.isdigit() and "items" in schema:
        out += schemas_at(reg, doc_name, schema["items"], rest, depth + 1)
    return out


@pytest.mark.parametrize("doc,path,kw,const", REQUIRED_LIMITS)
def test_schema_states_limit(doc, path, kw, const):
    if not (SCHEMA_DIR / doc).exists():
        pytest.fail(f"schema/{doc} missing (owned by spec)")
    reg = Registry(SCHEMA_DIR)
    found = [s[kw] for s in schemas_at(reg, doc, reg.doc(doc), [p for p in path.split("/") if p]) if kw in s]
    want = read_limits()[const]
    assert found, f"{doc}: nothing at {path} states {kw} (want {const} = {want})"
    assert all(v == want for v in found), f"{doc}{path}: {kw} {found} != {const} {want}"


def test_request_schema_agrees_with_server(api, reg, client):
    """What the server accepts validates against the request schema; what the
    schema rejects, the server rejects with 422."""
    val = Validator(reg)
    body_schema = api["paths"]["/v1/submissions"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    good = [compile_sub(GOOD_KERNEL), compile_sub(GOOD_KERNEL, options=["-O3"], tags={"run_id": "x", "step": 1}),
            inline_full_sub(), {"submissions": [compile_sub(GOOD_KERNEL)]}]
    if library_task(client):
        good.append(full_sub(client))
    # The envelope broken: the request is refused. The candidate broken: stored, verdict rejected.
    bad = [compile_sub(bogus=1), compile_sub(mode="fast"), compile_sub(tags={"step": "x"}), {"submissions": "x"}]
    bad_candidate = [compile_sub(source=3), compile_sub(options="-O3"), compile_sub(source="x" * ((1 << 20) + 1))]
    for body in good:
        errs = val.errors(body, body_schema, "openapi.json")
        assert not errs, f"schema rejects a good submission: {errs[:5]}"
        r = client.post("/v1/submissions", json=body)
        assert r.status_code == 202 and r.json().get("state", "queued") == "queued", r.text
        assert not r.json().get("rejected"), r.text
    for body in bad:
        assert val.errors(body, body_schema, "openapi.json"), f"schema accepts {str(body)[:200]}"
        assert client.post("/v1/submissions", json=body).status_code == 422
    for body in bad_candidate:
        assert val.errors(body, body_schema, "openapi.json"), f"schema accepts {str(body)[:200]}"
        r = client.post("/v1/submissions", json=body)
        assert r.status_code == 202 and r.json()["verdict"] == "rejected", r.text


def test_schemacheck_can_fail(reg):
    """The validator must reject what it should, or the tests above prove nothing."""
    val = Validator(reg)
    s = {"type": "object", "required": ["a"], "additionalProperties": False,
         "properties": {"a": {"type": "integer", "maximum": 3}, "b": {"enum": ["x"]}}}
    assert not val.errors({"a": 3}, s, "openapi.json")
    for v in ({}, {"a": 4}, {"a": 1.5}, {"a": True}, {"a": 1, "c": 0}, {"a": 1, "b": "y"}, []):
        assert val.errors(v, s, "openapi.json"), v
    assert val.errors({"id": "x"}, {"$ref": "#/components/schemas/SubmissionAccepted"}, "openapi.json")
    with pytest.raises(SchemaError):
        val.errors(1, {"frobnicate": 1}, "openapi.json")


def test_openapi_document_is_well_formed(api, reg):
    assert api["openapi"].startswith("3.1")
    # Every $ref resolves.
    for name in schema_files():
        doc = json.loads((SCHEMA_DIR / name).read_text())
        for path, node in walk(doc):
            if isinstance(node.get("$ref"), str):
                reg.resolve(name, node["$ref"])
    ids = [op["operationId"] for item in api["paths"].values() for m, op in item.items() if m in METHODS]
    assert len(ids) == len(set(ids))
