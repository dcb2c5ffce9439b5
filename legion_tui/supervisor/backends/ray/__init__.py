"""Agents on a Ray cluster: the host's side (`handle`), the node's side (`actor`), the
cluster (`cluster`), the session mirror (`mirror`), what is shipped (`shipping`), the
bounded starts (`starts`)."""
