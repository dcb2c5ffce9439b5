"""The simulated agent (SPEC §9), for the no-key demo and the tests only: the turn
machine (`agent`), its scenario (`script`), its session file (`session`), the legion
verbs and real edits it plays (`player`), and `legion-sim`, its pi-RPC front
(`rpc_front`). Never imports the supervisor: it talks to a host through `wire`."""
