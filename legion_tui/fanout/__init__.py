"""Fan-outs (issue 34): one task given to several attempts, siblings in one attempt
group; the group as the tree and `legion status` show it (`group`), the attempts side by
side and the pick of the best (`compare`)."""
