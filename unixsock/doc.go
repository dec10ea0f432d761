// Package unixsock listens on and dials unix sockets that live in a
// directory someone else can write: a sandbox's socket directory, which is
// mounted into the sandbox, or a shared temporary directory.
//
// Whoever can write that directory can replace a socket with a symbolic
// link at any moment, to a host file (and a chmod by name would change
// that file's mode) or to another socket (the engine's, another
// sandbox's: a dial by name would send them what was meant for the
// sandbox). So nothing here follows a link at the socket's own name:
// Listen removes a stale entry by name (unlink never follows), binds
// (bind never follows a link at the last element) and sets the mode on
// the inode it finds there through a descriptor opened with O_PATH and
// O_NOFOLLOW, after checking that it is a socket; Dial connects through
// such a descriptor too. The directories above the socket are trusted:
// they must belong to the caller.
//
// A sandbox may still swap in a socket of its own. That is harmless: it
// can only hand the host something that the sandbox controls anyway, and
// a sandbox has no way to link a host file into its directory (hard links
// do not cross mounts, and the host's files are not in its view).
package unixsock
