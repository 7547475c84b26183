"""Local training and evaluation over stacked per-client parameters (the package was `engine`; the run key
`engine` names only how local training is computed: batched, looped or sequential)."""
