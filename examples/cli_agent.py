"""A command-line agent: one chat completion through $OPENAI_BASE_URL, reward 1 if the reply is non-empty.

    agentrl train --env "external:cmd:python examples/cli_agent.py" model.name=smollm2-135m-instruct

Standard library only. The task arrives as JSON in $AGENTRL_TASK (and on stdin); the last line printed to
stdout is the reward (docs/gateway.md, "Command-line agents").
"""

import json
import os
import urllib.request

task = json.loads(os.environ["AGENTRL_TASK"])  # {"seed": seed} unless env.kwargs.tasks names a JSONL file
question = task.get("question", f"Say something about the number {task.get('seed')}.")
body = {"model": os.environ["OPENAI_MODEL"], "messages": [{"role": "user", "content": question}], "max_tokens": 32}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                                          "Content-Type": "application/json"})
with urllib.request.urlopen(request, timeout=60) as response:
    reply = json.load(response)["choices"][0]["message"]["content"] or ""
print(1.0 if reply.strip() else 0.0)
