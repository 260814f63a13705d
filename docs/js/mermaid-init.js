// Draws the ```mermaid blocks of the guides (docs/concepts.md); pymdownx.superfences turns
// each into a <div class="mermaid"> holding the diagram's text.
mermaid.initialize({ startOnLoad: true });
