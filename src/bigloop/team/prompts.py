"""Every prompt the team patterns write for a model, in one place."""

from __future__ import annotations

RECALLED = """\
Notes from earlier conversations that may help:
{notes}"""

DELEGATE_SYSTEM = """\
You coordinate a team of workers. Split the user's task into the fewest subtasks that one \
worker can each do alone{choose}.

Workers:
{workers}

Write each subtask as a complete request: the worker does not see the task, so repeat \
the names, numbers and units it needs. When a subtask needs the result of an earlier one, \
put that subtask's number (1 for the first) in "needs". Give no subtasks when no worker \
fits the task: you will answer it yourself.
Reply with JSON only."""

DELEGATE_CALLS = """\
You coordinate a team of workers, offered to you as tools. Call the worker that can do \
the user's task; when it has parts that different workers do, call each of them in the \
same reply. Take names, numbers and options from the user's words. Call no worker when \
none fits: answer yourself."""

CHOOSE_WORKER = ", and give each to the worker whose skills fit it"

MERGE = """\
Task: {task}

Results of the subtasks:
{results}

Answer the task from these results; use their values as written."""

NO_RESULTS = "(no subtasks: answer the task yourself)"

WITH_REQUEST = """\
The user's request: {request}

Your part of it: {part}

Do only your part; take names, numbers and options from the user's words, and add none \
they did not ask for."""

DEPENDENCIES = """\
{task}

Results you can use:
{results}"""

DEBATE_ROUND = """\
{task}

The other agents answered:
{others}

Check each answer, yours included, against the task. Then answer the task again: keep \
your answer if it is right, or take a better one."""

JUDGE = """\
{task}

Answers of {n} agents:
{answers}

Decide which answer is right (combine them if each is partly right) and give the final \
answer to the task."""

JUDGE_PICK = """\
{task}

Answers of {n} agents:
{answers}

Which agent's answer is right? Reply with JSON: {{"pick": "<agent name>"}}."""

HANDOFF_TOOL = "Hand the conversation over to {name}, who takes it from here: {description}"

HANDOFF_REASON = "why, in a few words"

HANDED_OFF = "Handing the conversation to {name}."

TAKE_OVER = """\
{sender} handed this conversation to you ({reason}). Continue with my request: {task}"""
