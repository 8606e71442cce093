"""The GitHub Action (docs/action.md): its settings, the event that started it, the mode it runs in."""
