// Package tools is the fixed tool set the agent offers the model:
// bash, str_replace_based_edit_tool, computer (desktop profile only),
// execute_code, recall and finish, with their JSON schemas. Every tool acts
// in the job's sandbox through toolboxd's client; none runs anything on the
// orchestrator.
//
// A tool never fails the run: bad input, a missing file, a command that
// times out or a service the sandbox lacks all come back as a Result with
// IsError set and a message the model can act on. Only the end of the
// caller's context stops a tool early, and then its result is not shown.
package tools
