"""Schemathesis hooks: the raw emails `POST inbound/email` takes
(`message/rfc822`) are sent as the generated text, byte for byte, as a
mail server's pipe would post them."""

import schemathesis

schemathesis.serializer.alias("message/rfc822", "text/plain")
