"""The views of a scenario run: text cells and the terminal table (text.py), the Mermaid sequence diagram
(diagram.py) and the HTML page (page.py). They read a ScenarioResult only."""
