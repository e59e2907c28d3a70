# restore-drop: drop every graph, named and default, before Restore loads a
# backup in place of the data (replace).
DROP ALL
