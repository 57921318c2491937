// Error type for image problems caused by what the client sent, so the route can answer 400 instead of 500.
export class ImageInputError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ImageInputError';
  }
}
