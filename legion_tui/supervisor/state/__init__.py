"""The host's state: `record` the one write path (ledger, then model, then the change
signal), `roster` who runs now, `naming` the one name resolver, `progress_watch` the
session watcher feeding the model."""
