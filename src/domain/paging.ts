/** The largest page a list answers, and the page size when the caller names none. */
export const PAGE_SIZE = 500;
