"""Claude Code over stream-json: the handle (`handle`), the stream (`stream`), its argv
(`argv`)."""
