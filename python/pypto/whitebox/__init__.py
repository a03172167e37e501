"""What a run shows, written by the front doors when asked: swimlanes (swimlane), the graph
viewer (graph_html), CANN's debug folder (debug_output), the machine model's report
(sim_report) and the numeric checks of the passes (verify, tensor_semantics, pass_verify). Over
the core layer, under the front doors; the tools that drive the front doors are in tools/."""
