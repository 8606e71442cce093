"""The GitHub Action (DESIGN.md §5): its settings, the event that started it, the mode it runs in."""
