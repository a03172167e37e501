"""The core layer: trace state (_tracing), dtypes, symbolic scalars, the traced Tensor, the
tensor ops (ops/), runtime control flow (control) and the options (config). Everything above it
(frontends/, compat/, tools/) builds on these; nothing here imports from above."""
