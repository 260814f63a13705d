"""The facts table's rows: keys, metrics folding, snapshot rows, detail payloads, and the
snapshot family of a stream with its cache."""
