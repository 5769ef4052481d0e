"""Running the real program under Frida and turning what the agent reports into a TaskTrace."""
