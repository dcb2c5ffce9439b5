"""What both sides of the supervisor's socket share: the names and the one error
(`names`), the line framing (`lines`), and the verbs' client (`client`,
`client_protocol`). Imports nothing heavy (SPEC §8's verb budget)."""
