#!/usr/bin/env python3
"""Check JSON documents against docs/summary.schema.json, with no module beyond python3's own:
the subset of JSON Schema (2020-12) that schema uses - type, const, enum, properties, required,
additionalProperties (boolean), items, minimum, maximum, pattern, $ref (#/$defs/...), oneOf.
A keyword outside that subset is an error, so the schema cannot silently outgrow the checker.
When python3's `jsonschema` module is there too, the documents are also checked by it (and the
schema itself against the 2020-12 metaschema).
Usage: schema_check.py SCHEMA FILE...   (FILE "-" = standard input). Exit 0 when all are valid;
otherwise one line per problem: "FILE: /json/pointer: what is wrong"."""
import json
import re
import sys

KNOWN = {"$schema", "$id", "$defs", "title", "description", "type", "const", "enum",
         "properties", "required", "additionalProperties", "items", "minimum", "maximum",
         "pattern", "$ref", "oneOf"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool)
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def same(a, b):
    """JSON equality: true is not 1."""
    return type(a) is type(b) and a == b or (
        isinstance(a, (int, float)) and isinstance(b, (int, float))
        and not isinstance(a, bool) and not isinstance(b, bool) and a == b)


def check(root, schema, value, path, errors):
    unknown = set(schema) - KNOWN
    if unknown:
        raise SystemExit("schema keyword(s) %s not supported by %s" % (sorted(unknown), __file__))
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise SystemExit("unsupported $ref %s" % ref)
        check(root, root["$defs"][ref[8:]], value, path, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            errors.append("%s: %r is not %s" % (path or "/", value, " or ".join(types)))
            return
    if "const" in schema and not same(value, schema["const"]):
        errors.append("%s: %r is not %r" % (path or "/", value, schema["const"]))
    if "enum" in schema and not any(same(value, e) for e in schema["enum"]):
        errors.append("%s: %r is not one of %r" % (path or "/", value, schema["enum"]))
    num = isinstance(value, (int, float)) and not isinstance(value, bool)
    if num and "minimum" in schema and value < schema["minimum"]:
        errors.append("%s: %r < %r" % (path, value, schema["minimum"]))
    if num and "maximum" in schema and value > schema["maximum"]:
        errors.append("%s: %r > %r" % (path, value, schema["maximum"]))
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append("%s: %r does not match %s" % (path, value, schema["pattern"]))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                errors.append("%s: member %r missing" % (path or "/", k))
        for k, v in value.items():
            if k in props:
                check(root, props[k], v, "%s/%s" % (path, k), errors)
            elif schema.get("additionalProperties", True) is False:
                errors.append("%s: member %r is not in the schema" % (path or "/", k))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            check(root, schema["items"], v, "%s/%d" % (path, i), errors)
    if "oneOf" in schema:
        results = []
        for sub in schema["oneOf"]:
            e = []
            check(root, sub, value, path, e)
            results.append(e)
        passed = sum(1 for e in results if not e)
        if passed != 1:
            best = min(results, key=len)
            errors.append("%s: matches %d of oneOf's %d (closest: %s)"
                          % (path or "/", passed, len(results), "; ".join(best[:3])))


def main():
    schema = json.load(open(sys.argv[1]))
    bad = 0
    try:
        import jsonschema  # optional: Debian's python3-jsonschema
        jsonschema.Draft202012Validator.check_schema(schema)
        other = jsonschema.Draft202012Validator(schema)
    except ImportError:
        other = None
    for name in sys.argv[2:]:
        text = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
        try:
            doc = json.loads(text)
        except ValueError as e:
            print("%s: not JSON: %s" % (name, e))
            bad += 1
            continue
        errors = []
        check(schema, schema, doc, "", errors)
        if other is not None:
            errors += ["jsonschema: %s at /%s" % (e.message, "/".join(map(str, e.path)))
                       for e in other.iter_errors(doc)]
        for e in errors:
            print("%s: %s" % (name, e))
        bad += bool(errors)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
