package api

// structObjects are the paths (as duplicateKey writes them) of the nested
// objects of request bodies that decode into structs, whose keys
// encoding/json matches without case: {"url": "a", "URL": "b"} would fill
// one field, so duplicateKey compares their keys without case too, as it
// does at the top level. A job's repository is checked by
// drydock.RepoSpec.Validate (with the job's other fields) before anything
// is stored.
var structObjects = map[string]bool{`"repo".`: true, `"repo"."push".`: true}
