package pytypes_test

import (
	"strings"
	"testing"

	"github.com/drydockhq/drydock/sdk/internal/pytypes"
)

func TestGenerateMapsEveryKindOfSchema(t *testing.T) {
	t.Parallel()
	doc := `{"paths": {"/things/{id}": {"put": {"operationId": "setThing",
		"requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}},
			"multipart/form-data": {"schema": {"type": "object", "properties": {"file": {"type": "string"}}}}}},
		"responses": {"200": {"content": {"application/json": {"schema": {"type": "object", "properties": {"thing": {"$ref": "#/components/schemas/Thing"}}}}}},
			"404": {"content": {"application/json": {"schema": {"type": "object", "properties": {"oops": {"type": "string"}}}}}}}}}},
	"components": {"schemas": {
		"Thing": {"type": "object", "required": ["id"], "description": "A thing. More words.", "properties": {
			"id": {"type": "string"},
			"kind": {"type": "string", "enum": ["a", "b"]},
			"count": {"type": "integer"},
			"ratio": {"type": "number"},
			"ok": {"type": "boolean"},
			"when": {"type": ["string", "null"]},
			"tags": {"type": ["array", "null"], "items": {"type": "string"}},
			"labels": {"type": "object", "additionalProperties": {"type": "string"}},
			"extra": {"type": "object"},
			"timeout": {"oneOf": [{"type": "string"}, {"type": "number"}]},
			"other": {"$ref": "#/components/schemas/Other"},
			"inner": {"type": "object", "properties": {"x_y": {"type": "integer"}}}
		}},
		"Other": {"type": "object", "properties": {"name": {"type": "string"}}}
	}}}`
	out, err := pytypes.Generate([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	if strings.Contains(got, "oops") || strings.Contains(got, "file:") {
		t.Errorf("an error answer's or a multipart form's schema became a type:\n%s", got)
	}
	for _, want := range []string{
		"class Thing(TypedDict, total=False):\n    \"A thing.\"\n",
		"    id: Required[str]\n",
		`    kind: Literal["a", "b"]` + "\n",
		"    count: int\n",
		"    ratio: float\n",
		"    ok: bool\n",
		"    when: str | None\n",
		"    tags: list[str] | None\n",
		"    labels: dict[str, str]\n",
		"    extra: dict[str, Any]\n",
		"    timeout: str | float\n",
		"    other: Other\n",
		"    inner: ThingInner\n",
		"class ThingInner(TypedDict, total=False):\n    x_y: int\n",
		"class Other(TypedDict, total=False):\n    name: str\n",
		"class SetThingRequest(TypedDict, total=False):\n    n: Required[int]\n",
		"class SetThingResponse(TypedDict, total=False):\n    thing: Thing\n",
		`__all__ = ["Other", "SetThingRequest", "SetThingResponse", "Thing", "ThingInner"]`,
		"from typing import Any, Literal, Required, TypedDict\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the module lacks %q:\n%s", want, got)
		}
	}
}

// A property named by a Python keyword ("from" of a message) cannot be a
// class attribute; the TypedDict takes the functional form, which any
// key can name.
func TestGenerateNamesKeywordPropertiesInTheFunctionalForm(t *testing.T) {
	t.Parallel()
	out, err := pytypes.Generate([]byte(`{"components": {"schemas": {"Msg": {"type": "object", "description": "A message.", "properties": {"text": {"type": "string"}, "from": {"type": "string"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		`__all__ = ["Msg"]`,
		"# A message.\nMsg = TypedDict(\"Msg\", {\n    \"from\": \"str\",\n    \"text\": \"str\",\n}, total=False)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the module lacks %q:\n%s", want, got)
		}
	}
}

func TestGenerateRefusesWhatPythonCannotName(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"a dash":            `{"components": {"schemas": {"S": {"type": "object", "properties": {"a-b": {"type": "string"}}}}}}`,
		"a foreign $ref":    `{"components": {"schemas": {"S": {"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}}}}}`,
		"an unknown type":   `{"components": {"schemas": {"S": {"type": "object", "properties": {"a": {"type": "decimal"}}}}}}`,
		"no schemas at all": `{"paths": {}}`,
		"not JSON":          `{`,
	} {
		if _, err := pytypes.Generate([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
