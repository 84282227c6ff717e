/** One authenticated JSON request to a Vigil; the answer body parsed when it is JSON. */
export interface ApiAnswer {
  status: number;
  /** the parsed JSON answer; loose because tests assert on its shape */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
  /** response headers, names in lower case */
  headers: Record<string, string>;
}

export async function requestJson(
  url: string,
  token: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiAnswer> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body: parsed, headers: Object.fromEntries(res.headers) };
}
