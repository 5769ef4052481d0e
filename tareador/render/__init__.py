"""Pictures for people: dependency graphs and plots."""
