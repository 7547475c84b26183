"""What crosses the wire in a round, as each algorithm declares it (`Algorithm.messages`), from the objects it
sends: models and model parts (their parameters x their dtype's size), loss vectors, cluster ids, prototypes.

The count follows the method's protocol for the clients that report in the round (the plan's clients): a client
that drops out (`client_dropout`) sends and receives nothing here, and a message the simulation computes on the
server for convenience (IFCA's and CLoVE's losses of every client, for scoring) is counted where the protocol
computes it, on the clients that take part. The run writes the messages to communication.csv and their totals to
summary.json's `communication` (finished_run.py)."""
from dataclasses import dataclass
from typing import List

from ..models.rows import Rows, count_rows

DIRECTIONS = ("down", "up")   # down: server to client; up: client to server


@dataclass(frozen=True)
class Message:
    """One kind of message of a round: `what` it is, its `direction`, how many `clients` receive (down) or send
    (up) it, and the bytes of one client's copy."""
    what: str
    direction: str
    clients: int
    bytes_each: int

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"Message.direction={self.direction!r}; allowed: {list(DIRECTIONS)}")
        if self.clients < 0 or self.bytes_each < 0:
            raise ValueError(f"Message {self.what!r}: clients={self.clients}, bytes_each={self.bytes_each}; "
                             "allowed: counts >= 0")

    @property
    def bytes(self) -> int:
        return self.clients * self.bytes_each


def _tensors(stack):
    """The tensors of a Stack, or of the stack a Rows reads from (no rows copied)."""
    return (stack.source if isinstance(stack, Rows) else stack).values()


def row_bytes(stack) -> int:
    """The bytes of one row (one model) of a Stack or Rows: each tensor's elements per row x its dtype's size."""
    return sum(v[0].numel() * v.element_size() for v in _tensors(stack))


def value_bytes(stack) -> int:
    """The size of one number of the models (4 for float32), for messages of plain numbers (losses, ids)."""
    return next(iter(_tensors(stack))).element_size()


def exchange(plan) -> List[Message]:
    """FedAvg's exchange: each planned row's starting model down, and its result up (the trained model, or under
    `local="gradient"` its gradient, of the same size). A client that trains several rows (Fed-CAM's two threads,
    ensemble members) receives and sends each."""
    rows, size = count_rows(plan.start), row_bytes(plan.start)
    return [Message("model", "down", rows, size),
            Message("gradient" if plan.local == "gradient" else "model", "up", rows, size)]


def cluster_choice_messages(plan, k: int, estimates: str) -> List[Message]:
    """The exchange of a method whose clients choose among K cluster models by their losses (IFCA, CLoVE): the K
    models down to each reporting client; up, what the client reports for the choice (`estimates`: "cluster id",
    one number; "loss vector", K numbers), and for a server-side choice (CLoVE's clustering) the chosen model's
    index back down; then the trained model (or gradient) up."""
    rows, size, number = count_rows(plan.start), row_bytes(plan.start), value_bytes(plan.start)
    messages = [Message(f"{k} cluster models", "down", rows, k * size)]
    if estimates == "loss vector":
        messages += [Message("loss vector", "up", rows, k * number), Message("cluster id", "down", rows, number)]
    else:
        messages.append(Message("cluster id", "up", rows, number))
    messages.append(Message("gradient" if plan.local == "gradient" else "model", "up", rows, size))
    return messages


def totals(rows: List[dict]) -> dict:
    """{bytes_down, bytes_up} over communication.csv's rows."""
    return {f"bytes_{d}": int(sum(r["bytes"] for r in rows if r["direction"] == d)) for d in DIRECTIONS}
