"""The user simulator of scenario cases: its configuration (test_config.json's
`user_simulator_config`), its prompt, and the Gemini calls that write each user turn with
ADK's turn loop and stop rules (docs/architecture.md, "Scenario cases")."""
