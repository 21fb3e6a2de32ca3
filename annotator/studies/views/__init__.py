"""The study pages: links as workers open them, the consent and instructions flow, the Studies page."""
