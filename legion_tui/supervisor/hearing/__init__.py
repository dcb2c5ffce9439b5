"""What a parent and a user hear: completion notices (`notices`, `notice_text`), what
an ending hands over (`endings`, `results`), wait / collect / status / tree (`queries`,
`status`), BLOCKED from an agent's own question (`blocking`), `$` budgets (`budget`)."""
