"""A node's life: a spawn's request checked alone (`spawn_request`), admitted
(`admission`), launched (`launching`), run to its ending (`lifecycle`), controlled
(`control`, `stops`), retired (`retires`, `owed_retires`, `retire_reasons`), paused and
restored with its run (`continuity`), lost with its Ray node (`node_loss`)."""
