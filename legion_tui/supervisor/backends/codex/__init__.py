"""Codex over its app-server: the handle (`handle`), its turns (`turns`), the JSON-RPC
client (`rpc`), its argv (`argv`)."""
