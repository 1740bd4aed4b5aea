import { useCallback, useEffect, useState } from 'preact/hooks';

export type Resource<T> = {
  data?: T;
  error?: string;
  isLoading: boolean;
  reload(): void;
};

// Loads once per change of `key`, and again on reload(). An answer that arrives after the key
// changed is dropped, so a slow old request never overwrites a newer view.
export function useResource<T>(key: string, load: () => Promise<T>): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: string; isLoading: boolean }>({
    isLoading: true,
  });
  const [generation, setGeneration] = useState(0);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);

  // Not on `load`: it is a fresh closure at every render, and `key` names what it loads.
  useEffect(() => {
    let isCurrent = true;
    setState((previous) => ({ ...previous, isLoading: true, error: undefined }));
    load().then(
      (data) => {
        if (isCurrent) setState({ data, isLoading: false });
      },
      (error: unknown) => {
        if (isCurrent) {
          setState((previous) => ({
            ...previous,
            isLoading: false,
            error: error instanceof Error ? error.message : String(error),
          }));
        }
      },
    );
    return () => {
      isCurrent = false;
    };
  }, [key, generation]);

  return { ...state, reload };
}
