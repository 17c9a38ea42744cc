"""Validation of a JSON value against the JSON Schema subset structured
output takes (docs/serving.md, "Structured output"), written from the
subset's rules alone so that it checks the decoder rather than repeats it;
and the schemas the structured-output tests decode under."""


def _type_ok(value, name):
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise ValueError("unknown type " + name)


def validates(value, schema):
    """True when `value` (parsed JSON) is valid under `schema`."""
    if schema is True:
        return True
    if "anyOf" in schema:
        return any(validates(value, s) for s in schema["anyOf"])
    if "const" in schema and value != schema["const"]:
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(value, n) for n in names):
            return False
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if any(r not in value for r in schema.get("required", [])):
            return False
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                if not validates(item, props[key]):
                    return False
            elif extra is False or (extra is not True and not validates(item, extra)):
                return False
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", 1 << 30):
            return False
        if "items" in schema and not all(validates(v, schema["items"]) for v in value):
            return False
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 1 << 30):
            return False
    return True


SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]},
                     "minItems": 1, "maxItems": 3},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "nested": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "owner": {"type": "object",
                      "properties": {"ok": {"type": "boolean"},
                                     "score": {"type": ["number", "null"]}},
                      "required": ["ok"], "additionalProperties": False},
            "kind": {"anyOf": [{"const": "a"}, {"type": "integer"},
                               {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}]},
        },
        "required": ["id", "owner", "kind"],
        "additionalProperties": False,
    },
    "short strings": {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": 3},
        "minItems": 2, "maxItems": 4,
    },
    "scalar": {"anyOf": [{"type": "integer"}, {"type": "boolean"}, {"type": "null"}]},
}
