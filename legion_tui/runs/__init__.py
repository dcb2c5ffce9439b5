"""A run on disk, for the host and for every verb: its folder and `run.json` (`folder`),
the session -> run pointer and the live run a verb talks to (`catalog`), the host's lock
on a session (`host_lock`), owner-only folders (`privacy`), the socket's link
(`socket_link`)."""
