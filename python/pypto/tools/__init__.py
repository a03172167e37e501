"""White-box tools over the compiler's and runtime's outputs: swimlanes (swimlane.py), the
graph viewer (graph_html.py). See docs/toolchain.md."""
