"""The supervisor's socket: accept and framing (`server`), a request to its reply
(`dispatch`), one handler per op (`server_ops`), the limits (`intake`), the caller from
`SO_PEERCRED` (`identity`). The verbs' side is `legion_tui.wire`."""
