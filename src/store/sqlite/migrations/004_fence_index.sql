-- the highest recorded fence, read when the lock's counter was lost (Redis restarted)
CREATE INDEX incidents_fence ON incidents (fence);
