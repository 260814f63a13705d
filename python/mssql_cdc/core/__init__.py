"""The core values: LSNs, offsets and ranges, the checkpoint toolkit's Python face, the
recovery decision's values, and the metrics and event file contract shared by source and sink."""
