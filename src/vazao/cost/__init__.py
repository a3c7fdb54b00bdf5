"""What it costs: API bills (requests, conversations, agents, usage logs), self-hosted $/Mtok,
break-even against an API, training runs, and the prompt-prefix advisor."""
