"""Reading and writing files: tables, baselines, request logs, masks, atomic outputs."""
