"""Role cards and the simulated agent."""
