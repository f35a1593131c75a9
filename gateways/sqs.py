"""The SQS interruption queue's client: long-poll receive and delete on one queue, through a boto3 SQS client.

What a message means and when it is deleted is the poller activity's (activities/queue.py); this only talks to SQS.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QueueMessage:
    message_id: str
    receipt_handle: str
    body: str
    receive_count: int = 1
    sent_at: float | None = None  # epoch seconds


class SqsQueue:
    """Blocking calls on one queue through a boto3 SQS client (called from threads)."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self._sqs = sqs
        self.url = queue_url
        # The long poll blocks a thread for up to 20 s: give it its own, not one of the loop's shared ones.
        self.poll_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqs-poll")

    def receive(self, wait_seconds: int, max_messages: int, visibility_timeout: int) -> list[QueueMessage]:
        resp = self._sqs.receive_message(
            QueueUrl=self.url, MaxNumberOfMessages=max(1, min(max_messages, 10)),
            WaitTimeSeconds=max(0, min(wait_seconds, 20)), VisibilityTimeout=visibility_timeout,
            MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
        )
        out = []
        for m in resp.get("Messages", []):
            attrs = m.get("Attributes") or {}
            sent = attrs.get("SentTimestamp")
            out.append(QueueMessage(
                message_id=m["MessageId"], receipt_handle=m["ReceiptHandle"], body=m.get("Body", ""),
                receive_count=int(attrs.get("ApproximateReceiveCount", "1")),
                sent_at=int(sent) / 1000.0 if sent else None,
            ))
        return out

    def delete(self, receipt_handle: str) -> None:
        self._sqs.delete_message(QueueUrl=self.url, ReceiptHandle=receipt_handle)
