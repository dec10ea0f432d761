package api_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drydockhq/drydock"
)

// servedKinds are the kinds of events the API serves: every kind but the
// task events the runner builds for an agent's prompt, which no log
// stores.
func servedKinds() []drydock.EventType {
	var out []drydock.EventType
	for k := range drydock.EventDataTypes {
		if k != drydock.EventTask {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestOpenAPIDescribesEventData keeps /openapi.json's event schemas those of
// the root package's payload types: Event.type lists every kind served,
// Event.data is one of their components, and each component (and the
// components they use) has exactly its Go type's fields, of its types.
// Descriptions are the document's own.
func TestOpenAPIDescribesEventData(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc.Components.Schemas

	want := map[string]any{}
	var dataRefs []string
	for _, k := range servedKinds() {
		ref := eventSchemas(drydock.EventDataTypes[k], want)
		if !slices.Contains(dataRefs, ref["$ref"].(string)) {
			dataRefs = append(dataRefs, ref["$ref"].(string))
		}
	}
	for name, w := range want {
		got, ok := schemas[name]
		if !ok {
			t.Errorf("openapi.json has no component %s (an event payload type)", name)
			continue
		}
		if g := undescribed(t, got); !reflect.DeepEqual(g, roundTrip(t, w)) {
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(w)
			t.Errorf("component %s is\n%s\nwant (from drydock.%s)\n%s", name, gb, name, wb)
		}
	}

	var event struct {
		Properties struct {
			Type struct {
				Enum []drydock.EventType `json:"enum"`
			} `json:"type"`
			Data struct {
				OneOf []struct {
					Ref string `json:"$ref"`
				} `json:"oneOf"`
			} `json:"data"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schemas["Event"], &event); err != nil {
		t.Fatal(err)
	}
	kinds := slices.Sorted(slices.Values(event.Properties.Type.Enum))
	if !slices.Equal(kinds, servedKinds()) {
		t.Errorf("Event.type lists %v; the kinds served are %v", kinds, servedKinds())
	}
	var refs []string
	for _, r := range event.Properties.Data.OneOf {
		refs = append(refs, r.Ref)
	}
	slices.Sort(refs)
	slices.Sort(dataRefs)
	if !slices.Equal(refs, dataRefs) {
		t.Errorf("Event.data is one of %v; want one of %v", refs, dataRefs)
	}

	if path := os.Getenv("DRYDOCK_DUMP_EVENT_SCHEMAS"); path != "" {
		// A tool's input for writing the components into the document in
		// field order (maps would sort them).
		var names []string
		for n := range want {
			names = append(names, n)
		}
		slices.Sort(names)
		var out []any
		for _, n := range names {
			out = append(out, []any{n, orderedFields(t, n)})
		}
		b, _ := json.MarshalIndent(out, "", " ")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var rootPkg = reflect.TypeFor[drydock.Event]().PkgPath()

// eventSchemas adds the component of t (a root payload type) and of the
// root types it uses to into, and returns the reference to it.
func eventSchemas(t reflect.Type, into map[string]any) map[string]any {
	if _, ok := into[t.Name()]; !ok {
		props := map[string]any{}
		into[t.Name()] = nil // a type that refers to itself ends here
		addFields(t, props, into)
		into[t.Name()] = map[string]any{"type": "object", "properties": props}
	}
	return map[string]any{"$ref": "#/components/schemas/" + t.Name()}
}

func addFields(t reflect.Type, props map[string]any, into map[string]any) {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			addFields(f.Type, props, into) // embedded: its fields are the outer's
			continue
		}
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = schemaOf(f.Type, into)
	}
}

func schemaOf(t reflect.Type, into map[string]any) map[string]any {
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		return map[string]any{} // any JSON value
	case t == reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem(), into)
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), into)}
	case reflect.Struct:
		if t.PkgPath() == rootPkg && t.Name() != "" {
			return eventSchemas(t, into)
		}
	}
	panic("no schema for " + t.String())
}

// orderedFields lists the properties of component n as [name, schema]
// pairs in the Go type's field order.
func orderedFields(t *testing.T, n string) [][2]any {
	var typ reflect.Type
	for _, k := range drydock.EventDataTypes {
		walkTypes(k, func(x reflect.Type) {
			if x.Name() == n && x.PkgPath() == rootPkg {
				typ = x
			}
		})
	}
	if typ == nil {
		t.Fatalf("no type %s", n)
	}
	var out [][2]any
	var add func(reflect.Type)
	add = func(x reflect.Type) {
		for f := range x.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				add(f.Type)
				continue
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			out = append(out, [2]any{name, schemaOf(f.Type, map[string]any{})})
		}
	}
	add(typ)
	return out
}

func walkTypes(t reflect.Type, f func(reflect.Type)) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	f(t)
	for fl := range t.Fields() {
		walkTypes(fl.Type, f)
	}
}

// undescribed is a schema without its descriptions.
func undescribed(t *testing.T, raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if k == "description" {
					if _, isText := e.(string); isText {
						continue
					}
				}
				out[k] = strip(e)
			}
			return out
		case []any:
			for i := range x {
				x[i] = strip(x[i])
			}
		}
		return v
	}
	return strip(v)
}

func roundTrip(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
