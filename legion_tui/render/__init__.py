"""Frame buffers and the two drawn panels, in numpy and plain strings — no Textual.

- `braille`: the braille canvas (pixel grid → uint32 codes → row strings, cell keys/inks)
- `galaxy`: the legion as a star map drawn into a canvas
- `chart`: rate buckets once per frame and the stacked ⅛-block tok/s chart
- `rows`: row strings + ink grid → styled segments, one per run of equal ink
- `inks`: the colour indices and the (theme, ink) → Style cache
- `reentry`: the gate that makes a nested render raise
- `rates`: the live tok/s every panel agrees on (computed once per node per frame)
- `feed`: which nodes changed since the last frame, the live set and status counts,
  from the model's dirty ids (no per-frame walk over every node)
- `steps`: the 1/4 s steps the galaxy and the chart draw in (one frame each per step)
- `arrays`: the numpy array type aliases
"""
