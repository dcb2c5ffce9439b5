"""pi over its RPC mode (and `legion-sim`, which speaks it): the client (`rpc`), the
handle (`handle`), its argv (`argv`), a pi binary's features (`cli`)."""
