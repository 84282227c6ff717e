-- Version 26: retention covers the inbox (docs/privacy.md): entries recorded before the
-- cut-off are deleted, oldest first.
CREATE INDEX notifications_created ON notifications (created_at);
