"""Supervision: launch, operations, the socket, runs, backends, the stop sweep."""
