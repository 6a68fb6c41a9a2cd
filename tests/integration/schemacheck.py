"""
schemacheck - a small JSON Schema (draft 2020-12) validator for the subset
kevald's documents use, so the integration tests need no jsonschema package.

Schemas are loaded from schema/ (openapi.json and the *.schema.json files it
references); `$ref` resolves within a document ("#/components/...") and across
files ("task.schema.json#/$defs/x") relative to the referring document. A
keyword this module does not know is an error, not silently ignored, so a
schema cannot quietly escape the check.
"""
import json
import math
import re
from pathlib import Path

ANNOTATIONS = {
    "$schema", "$id", "$comment", "$anchor", "title", "description", "default", "examples",
    "example", "format", "deprecated", "readOnly", "writeOnly", "contentMediaType",
    "contentEncoding", "discriminator", "xml", "externalDocs", "unevaluatedProperties",
}


class SchemaError(Exception):
    pass


class Registry:
    """Documents by file name, loaded lazily from @root."""

    def __init__(self, root):
        self.root = Path(root)
        self.docs = {}

    def doc(self, name):
        if name not in self.docs:
            path = self.root / name
            if not path.exists():
                raise SchemaError(f"$ref to missing document {name}")
            self.docs[name] = json.loads(path.read_text())
        return self.docs[name]

    def resolve(self, base, ref):
        """Return (document name, schema) for @ref seen inside document @base."""
        if "#" in ref:
            file, frag = ref.split("#", 1)
        else:
            file, frag = ref, ""
        name = file or base
        if file:
            name = str((Path(base).parent / file).as_posix()) if "/" in base else file
        node = self.doc(name)
        if frag:
            if not frag.startswith("/"):
                raise SchemaError(f"unsupported fragment {ref}")
            for part in frag[1:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(node, list):
                    node = node[int(part)]
                elif part in node:
                    node = node[part]
                else:
                    raise SchemaError(f"$ref {ref} from {base}: no {part!r}")
        return name, node


def _type_ok(value, t):
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or \
            (isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    raise SchemaError(f"unknown type {t}")


def _eq(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


class Validator:
    def __init__(self, registry):
        self.reg = registry

    def errors(self, value, schema, base, path="", depth=0):
        """Every violation of @schema by @value, as 'path: message' strings."""
        if depth > 200:
            raise SchemaError("schema recursion too deep")
        if schema is True or schema == {}:
            return []
        if schema is False:
            return [f"{path or '/'}: no value allowed"]
        errs = []
        for key, sv in schema.items():
            if key in ANNOTATIONS or key.startswith("x-"):
                continue
            fn = getattr(self, "_k_" + key.lstrip("$"), None)
            if fn is None:
                if key in ("then", "else", "$defs", "definitions", "contains_", "minContains",
                           "maxContains"):
                    continue
                raise SchemaError(f"schemacheck does not know keyword {key!r} (at {base} {path})")
            errs += fn(value, sv, schema, base, path, depth)
        return errs

    def validate(self, value, schema, base):
        return self.errors(value, schema, base)

    # keywords
    def _k_ref(self, v, ref, s, base, path, d):
        name, sub = self.reg.resolve(base, ref)
        return self.errors(v, sub, name, path, d + 1)

    def _k_type(self, v, t, s, base, path, d):
        ts = t if isinstance(t, list) else [t]
        if any(_type_ok(v, x) for x in ts):
            return []
        return [f"{path or '/'}: {json.dumps(v)[:80]} is not of type {t}"]

    def _k_enum(self, v, e, s, base, path, d):
        return [] if any(_eq(v, x) for x in e) else [f"{path or '/'}: {v!r} not in {e}"]

    def _k_const(self, v, c, s, base, path, d):
        return [] if _eq(v, c) else [f"{path or '/'}: {v!r} != {c!r}"]

    def _k_properties(self, v, props, s, base, path, d):
        if not isinstance(v, dict):
            return []
        errs = []
        for k, sub in props.items():
            if k in v:
                errs += self.errors(v[k], sub, base, f"{path}/{k}", d + 1)
        return errs

    def _k_patternProperties(self, v, pp, s, base, path, d):
        if not isinstance(v, dict):
            return []
        errs = []
        for pat, sub in pp.items():
            for k in v:
                if re.search(pat, k):
                    errs += self.errors(v[k], sub, base, f"{path}/{k}", d + 1)
        return errs

    def _k_additionalProperties(self, v, ap, s, base, path, d):
        if not isinstance(v, dict):
            return []
        known = set(s.get("properties", {}))
        pats = list(s.get("patternProperties", {}))
        errs = []
        for k in v:
            if k in known or any(re.search(p, k) for p in pats):
                continue
            if ap is False:
                errs.append(f"{path}/{k}: property not allowed")
            elif isinstance(ap, dict):
                errs += self.errors(v[k], ap, base, f"{path}/{k}", d + 1)
        return errs

    def _k_propertyNames(self, v, pn, s, base, path, d):
        if not isinstance(v, dict):
            return []
        errs = []
        for k in v:
            errs += self.errors(k, pn, base, f"{path}/{k}(name)", d + 1)
        return errs

    def _k_required(self, v, req, s, base, path, d):
        if not isinstance(v, dict):
            return []
        return [f"{path or '/'}: missing {k!r}" for k in req if k not in v]

    def _k_dependentRequired(self, v, dr, s, base, path, d):
        if not isinstance(v, dict):
            return []
        return [f"{path}: {k} needs {x}" for k, xs in dr.items() if k in v for x in xs if x not in v]

    def _k_minProperties(self, v, n, s, base, path, d):
        return [f"{path}: fewer than {n} properties"] if isinstance(v, dict) and len(v) < n else []

    def _k_maxProperties(self, v, n, s, base, path, d):
        return [f"{path}: more than {n} properties"] if isinstance(v, dict) and len(v) > n else []

    def _k_items(self, v, sub, s, base, path, d):
        if not isinstance(v, list):
            return []
        start = len(s.get("prefixItems", []))
        errs = []
        for i, x in enumerate(v[start:], start):
            if sub is False:
                errs.append(f"{path}/{i}: no more items allowed")
            else:
                errs += self.errors(x, sub, base, f"{path}/{i}", d + 1)
        return errs

    def _k_prefixItems(self, v, subs, s, base, path, d):
        if not isinstance(v, list):
            return []
        errs = []
        for i, (x, sub) in enumerate(zip(v, subs)):
            errs += self.errors(x, sub, base, f"{path}/{i}", d + 1)
        return errs

    def _k_contains(self, v, sub, s, base, path, d):
        if not isinstance(v, list):
            return []
        n = sum(1 for x in v if not self.errors(x, sub, base, path, d + 1))
        lo = s.get("minContains", 1)
        hi = s.get("maxContains", math.inf)
        return [] if lo <= n <= hi else [f"{path}: contains {n} matches, want {lo}..{hi}"]

    def _k_minItems(self, v, n, s, base, path, d):
        return [f"{path}: fewer than {n} items"] if isinstance(v, list) and len(v) < n else []

    def _k_maxItems(self, v, n, s, base, path, d):
        return [f"{path}: more than {n} items"] if isinstance(v, list) and len(v) > n else []

    def _k_uniqueItems(self, v, u, s, base, path, d):
        if not (u and isinstance(v, list)):
            return []
        seen = [json.dumps(x, sort_keys=True) for x in v]
        return [f"{path}: items not unique"] if len(set(seen)) != len(seen) else []

    def _k_minLength(self, v, n, s, base, path, d):
        return [f"{path}: shorter than {n}"] if isinstance(v, str) and len(v) < n else []

    def _k_maxLength(self, v, n, s, base, path, d):
        return [f"{path}: longer than {n}"] if isinstance(v, str) and len(v) > n else []

    def _k_pattern(self, v, p, s, base, path, d):
        return [f"{path}: {v!r} !~ {p}"] if isinstance(v, str) and not re.search(p, v) else []

    def _num(self, v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    def _k_minimum(self, v, n, s, base, path, d):
        return [f"{path}: {v} < {n}"] if self._num(v) and v < n else []

    def _k_maximum(self, v, n, s, base, path, d):
        return [f"{path}: {v} > {n}"] if self._num(v) and v > n else []

    def _k_exclusiveMinimum(self, v, n, s, base, path, d):
        return [f"{path}: {v} <= {n}"] if self._num(v) and v <= n else []

    def _k_exclusiveMaximum(self, v, n, s, base, path, d):
        return [f"{path}: {v} >= {n}"] if self._num(v) and v >= n else []

    def _k_multipleOf(self, v, n, s, base, path, d):
        return [f"{path}: {v} not a multiple of {n}"] if self._num(v) and (v / n) % 1 else []

    def _k_allOf(self, v, subs, s, base, path, d):
        errs = []
        for sub in subs:
            errs += self.errors(v, sub, base, path, d + 1)
        return errs

    def _k_anyOf(self, v, subs, s, base, path, d):
        all_errs = []
        for sub in subs:
            e = self.errors(v, sub, base, path, d + 1)
            if not e:
                return []
            all_errs.append(e)
        return [f"{path or '/'}: matches no anyOf branch: {all_errs}"]

    def _k_oneOf(self, v, subs, s, base, path, d):
        results = [self.errors(v, sub, base, path, d + 1) for sub in subs]
        n = sum(1 for e in results if not e)
        if n == 1:
            return []
        return [f"{path or '/'}: matches {n} oneOf branches (want 1): {results if n == 0 else ''}"]

    def _k_not(self, v, sub, s, base, path, d):
        return [f"{path}: matches 'not'"] if not self.errors(v, sub, base, path, d + 1) else []

    def _k_if(self, v, sub, s, base, path, d):
        if not self.errors(v, sub, base, path, d + 1):
            return self.errors(v, s["then"], base, path, d + 1) if "then" in s else []
        return self.errors(v, s["else"], base, path, d + 1) if "else" in s else []

    def _k_dependentSchemas(self, v, ds, s, base, path, d):
        if not isinstance(v, dict):
            return []
        errs = []
        for k, sub in ds.items():
            if k in v:
                errs += self.errors(v, sub, base, path, d + 1)
        return errs
