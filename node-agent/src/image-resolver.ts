import {
  ErrorCode,
  errorCode,
  type Logger,
  noopLogger,
  raceSignal,
  TroupeError,
} from '@troupe/proto';
import type Docker from 'dockerode';
import { dockerError, dockerStatus } from './internal/docker-errors';
import { type ImageManager } from './image-manager';

/** What the sandbox and evaluator actors need before creating from an image. */
export interface ImagePreparer {
  /**
   * Makes `image` available on this host, or returns and lets creation fail with the reason.
   * @throws TroupeError when preparing fails (a failed build: `UNAVAILABLE`; building disabled:
   *   `NOT_FOUND` naming `deploy/images/build.sh`)
   */
  prepare(image: string, options?: { signal?: AbortSignal }): Promise<void>;
}

/** Options of {@link ImageResolver}. */
export interface ImageResolverOptions {
  /** The engine to look images up on. */
  docker: Docker;
  /** Builds Troupe's offline images (`troupe-<name>`) that are missing. */
  images: ImageManager;
  /**
   * Aborts builds in progress (the node agent's lifetime). A caller's own signal only stops its
   * wait: a build it started keeps going, so a retry finds the image.
   */
  signal?: AbortSignal;
  /** Logger. @default a logger that drops everything */
  logger?: Logger;
  /** Receives the progress lines of image builds (`[images] <name>: ...`). */
  onBuildProgress?: (line: string) => void;
}

/** `troupe-<name>` or `troupe-<name>:latest`: an image built from `deploy/images/<name>`. */
const TROUPE_IMAGE = /^troupe-([a-z0-9][a-z0-9-]{0,62})(?::latest)?$/;

/**
 * Prepares images on first use: an image present on the engine is used as is; a missing Troupe
 * image (`troupe-<name>[:latest]`) is built with {@link ImageManager.ensure} (or fails naming
 * `deploy/images/build.sh <name>` when building is disabled). Any other missing image is left to
 * the backend, which fails with `NOT_FOUND` (no registry is ever contacted).
 */
export class ImageResolver implements ImagePreparer {
  private readonly present = new Set<string>();
  private readonly log: Logger;

  constructor(private readonly options: ImageResolverOptions) {
    this.log = (options.logger ?? noopLogger).child({ component: 'image-resolver' });
  }

  async prepare(image: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.present.has(image)) return;
    try {
      await raceSignal(this.options.docker.getImage(image).inspect(), options.signal);
      this.present.add(image);
      return;
    } catch (err) {
      if (dockerStatus(err) !== 404) throw dockerError(`inspect image ${image}`, err);
    }
    const name = TROUPE_IMAGE.exec(image)?.[1];
    if (name === undefined) return;
    this.log.info({ image, recipe: name }, 'image missing: ensuring it from deploy/images');
    const ensured = this.options.images.ensure(name, {
      ...(this.options.signal ? { signal: this.options.signal } : {}),
      ...(this.options.onBuildProgress ? { onProgress: this.options.onBuildProgress } : {}),
    });
    try {
      await raceSignal(ensured, options.signal);
    } catch (err) {
      if (errorCode(err) !== ErrorCode.NOT_FOUND) throw err;
      throw new TroupeError(
        ErrorCode.NOT_FOUND,
        `image ${image} is not on this host and cannot be made: ${(err as Error).message} ` +
          `(images are built offline from deploy/images: deploy/images/build.sh ${name})`,
        { cause: err, details: { image } },
      );
    }
    this.present.add(image);
  }
}
